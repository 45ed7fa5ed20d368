package operator

import (
	"fmt"
	"strconv"
	"strings"
)

// MemoryLimitEnv carries the container's memory limit in bytes: the chart
// sets it from the downward API (resourceFieldRef limits.memory).
const MemoryLimitEnv = "MEMORY_LIMIT"

// DefaultMemoryLimitRatio leaves a tenth of what the Go runtime may use
// for what it does not count precisely (thread stacks, fragmentation) and
// the process's own pages, so the collector works harder before the
// kernel's OOM kill, not after it.
const DefaultMemoryLimitRatio = 0.9

func (m ManagerOptions) validateMemoryLimitRatio() error {
	if !(m.MemoryLimitRatio > 0 && m.MemoryLimitRatio <= 1) {
		return fmt.Errorf("--memory-limit-ratio must be in (0, 1], not %v", m.MemoryLimitRatio)
	}
	return nil
}

// binaryPages is set aside from the container's limit for the manager's
// own executable: about 50 MiB of its 91 MB binary stay resident as file
// pages (RssFile at 100,000 sites and at rest alike), which VmRSS and the
// container's memory count but the Go runtime's limit does not.
const binaryPages = 64 << 20

// GoMemLimit is the soft memory limit the manager gives the Go runtime:
// MemoryLimitRatio of the container's limit (limit, bytes, from
// MEMORY_LIMIT) after the binary's resident pages (binaryPages) and what
// the index backend holds outside the Go heap (outside: SQLite's page
// caches, index.MemoryOutsideGoHeap), or 0 to
// leave the runtime alone: when GOMEMLIMIT is set explicitly (explicit;
// the runtime has read it already) or no limit is known. A limit that
// leaves the Go heap less than minGoMemLimit is refused: the manager
// would only collect garbage.
func (m ManagerOptions) GoMemLimit(explicit, limit string, outside int64) (int64, error) {
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
	aside := binaryPages + outside
	goLimit := int64(float64(n-aside) * m.MemoryLimitRatio)
	if goLimit < minGoMemLimit {
		return 0, fmt.Errorf("a memory limit of %d bytes leaves the manager's Go heap %d bytes after %d for its binary and %d for the index backend's caches; give it at least %d",
			n, max(goLimit, 0), binaryPages, outside, aside+int64(float64(minGoMemLimit)/m.MemoryLimitRatio)+1)
	}
	return goLimit, nil
}

// minGoMemLimit is the least Go memory limit the manager starts with: its
// baseline heap with no CrawlTarget is about 30 MiB.
const minGoMemLimit = 64 << 20
