package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Cosign runs the cosign CLI (bin/cosign, make cosign-bin) with one key,
// offline: no transparency log, certificate authority or timestamp
// service is reachable from where releases are made, and a key signature
// verifies without them (`cosign verify --key … --insecure-ignore-tlog`).
// cosign v3 says "offline" with a signing config that names no services
// (its replacement for --tlog-upload=false) and an empty trusted root,
// without which it would fetch Sigstore's over TUF to check what it
// signed.
type Cosign struct {
	Bin string
	// Key is the private key; Password unlocks it (COSIGN_PASSWORD).
	Key, Password string
	// SigningConfig and TrustedRoot are the offline files (offline).
	SigningConfig, TrustedRoot string
}

// offline writes the signing config and trusted root of an offline
// signer into dir.
func (c *Cosign) offline(ctx context.Context, dir string) error {
	c.SigningConfig = filepath.Join(dir, "signing-config.json")
	c.TrustedRoot = filepath.Join(dir, "trusted-root.json")
	if _, err := c.run(ctx, "signing-config", "create", "--no-default-fulcio", "--no-default-rekor", "--no-default-tsa", "--no-default-oidc", "--out", c.SigningConfig); err != nil {
		return err
	}
	_, err := c.run(ctx, "trusted-root", "create", "--out", c.TrustedRoot)
	return err
}

// signFlags are the flags of every signing command.
func (c Cosign) signFlags() []string {
	return []string{"--yes", "--key", c.Key, "--signing-config", c.SigningConfig, "--trusted-root", c.TrustedRoot}
}

func (c Cosign) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.Bin, args...)
	cmd.Env = append(os.Environ(), "COSIGN_PASSWORD="+c.Password)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("cosign %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// releaseKey is the signer of a release: with the key given (COSIGN_KEY,
// its password in COSIGN_PASSWORD), or a development key in out, made on
// first use with an empty password; its offline files go to tmp. A real
// release is signed with the project's key; a development key only proves
// the machinery works.
func releaseKey(ctx context.Context, bin, given, out, tmp string) (Cosign, bool, error) {
	c := Cosign{Bin: bin, Key: given, Password: os.Getenv("COSIGN_PASSWORD")}
	dev := given == ""
	if !dev {
		if _, err := os.Stat(given); err != nil {
			return c, false, fmt.Errorf("COSIGN_KEY=%s: %w", given, err)
		}
	} else {
		c.Key, c.Password = filepath.Join(out, "cosign.key"), ""
		if _, err := os.Stat(c.Key); errors.Is(err, fs.ErrNotExist) {
			if _, err := c.run(ctx, "generate-key-pair", "--output-key-prefix", filepath.Join(out, "cosign")); err != nil {
				return c, dev, err
			}
		} else if err != nil {
			return c, dev, err
		}
	}
	return c, dev, c.offline(ctx, tmp)
}

// PublicKey writes the key's public half, the one verifiers use.
func (c Cosign) PublicKey(ctx context.Context, file string) error {
	_, err := c.run(ctx, "public-key", "--key", c.Key, "--outfile", file)
	return err
}

// SignBlob writes a file's signature as a Sigstore bundle (`cosign
// verify-blob --bundle` reads it).
func (c Cosign) SignBlob(ctx context.Context, file, bundle string) error {
	_, err := c.run(ctx, append(append([]string{"sign-blob"}, c.signFlags()...), "--bundle", bundle, file)...)
	return err
}

// Sign signs an image or artifact in a registry by digest, storing the
// signature there.
func (c Cosign) Sign(ctx context.Context, ref string, registryFlags []string) error {
	_, err := c.run(ctx, append(append(append([]string{"sign"}, c.signFlags()...), registryFlags...), ref)...)
	return err
}

// AttestSBOM attaches a CycloneDX SBOM to an image as a signed attestation.
func (c Cosign) AttestSBOM(ctx context.Context, ref, sbom string, registryFlags []string) error {
	args := append(append([]string{"attest"}, c.signFlags()...), "--type", "cyclonedx", "--predicate", sbom)
	_, err := c.run(ctx, append(append(args, registryFlags...), ref)...)
	return err
}
