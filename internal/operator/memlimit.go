package operator

import (
	"fmt"
	"strconv"
	"strings"
)

// MemoryLimitEnv carries the container's memory limit in bytes: the chart
// sets it from the downward API (resourceFieldRef limits.memory).
const MemoryLimitEnv = "MEMORY_LIMIT"

// DefaultMemoryLimitRatio leaves a tenth of the container's limit for
// memory the Go runtime does not count: SQLite's page caches (allocated
// outside the Go heap by modernc.org/libc; at most 4 connections × 32 MiB,
// see index/store/sqlite), thread stacks and the binary itself. The
// collector then works harder before the kernel's OOM kill, not after it.
const DefaultMemoryLimitRatio = 0.9

func (m ManagerOptions) validateMemoryLimitRatio() error {
	if !(m.MemoryLimitRatio > 0 && m.MemoryLimitRatio <= 1) {
		return fmt.Errorf("--memory-limit-ratio must be in (0, 1], not %v", m.MemoryLimitRatio)
	}
	return nil
}

// GoMemLimit is the soft memory limit the manager gives the Go runtime:
// MemoryLimitRatio of the container's limit (limit, bytes, from
// MEMORY_LIMIT), or 0 to leave the runtime alone: when GOMEMLIMIT is set
// explicitly (explicit; the runtime has read it already) or no limit is
// known.
func (m ManagerOptions) GoMemLimit(explicit, limit string) (int64, error) {
	if err := m.validateMemoryLimitRatio(); err != nil {
		return 0, err
	}
	if strings.TrimSpace(explicit) != "" {
		return 0, nil
	}
	limit = strings.TrimSpace(limit)
	if limit == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(limit, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want the container's memory limit in bytes", MemoryLimitEnv, limit)
	}
	return int64(float64(n) * m.MemoryLimitRatio), nil
}
