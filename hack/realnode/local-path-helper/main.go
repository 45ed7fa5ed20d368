// Command local-path-helper makes and removes the volumes of the dev
// cluster's storage provisioner (local-path-provisioner, hack/devcluster/
// addons). The provisioner runs it in a helper Pod on the node as its
// setupCommand and teardownCommand with -p DIR -s BYTES -m MODE -a ACTION;
// upstream's default runs a shell script in busybox, an image that cannot
// be pulled here and a shell no image of this project needs to carry.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	dir := flag.String("p", "", "Volume directory (absolute, in the provisioner's base directory).")
	flag.String("s", "", "Volume size in bytes (unused: local volumes are not capped).")
	mode := flag.String("m", "Filesystem", "Volume mode.")
	action := flag.String("a", "", "create or delete.")
	flag.Parse()
	if err := run(*dir, *mode, *action); err != nil {
		fmt.Fprintln(os.Stderr, "local-path-helper:", err)
		os.Exit(1)
	}
}

func run(dir, mode, action string) error {
	if err := checkDir(dir); err != nil {
		return err
	}
	switch action {
	case "create":
		if mode != "Filesystem" {
			return fmt.Errorf("volume mode %q: only Filesystem volumes are local directories", mode)
		}
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return err
		}
		// Whoever the Pod runs as may write to its volume, as with
		// upstream's `mkdir -m 0777`; MkdirAll's mode passes the umask.
		return os.Chmod(dir, 0o777)
	case "delete":
		return os.RemoveAll(dir)
	default:
		return fmt.Errorf("-a %q: want create or delete", action)
	}
}

// checkDir refuses what would make a delete remove more than one volume:
// a relative or unclean path, or one at the top of the file system.
func checkDir(dir string) error {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
		return fmt.Errorf("-p %q: want an absolute, clean path", dir)
	}
	if filepath.Dir(dir) == "/" {
		return fmt.Errorf("-p %q: a volume is a directory inside the provisioner's base directory", dir)
	}
	return nil
}
