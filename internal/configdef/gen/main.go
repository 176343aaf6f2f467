// Command gen writes configdef's key table into the README, between its
// marker lines: go generate ./internal/configdef.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/strata-io/strata/internal/configdef"
)

func main() {
	path := flag.String("readme", "README.md", "the README to update")
	flag.Parse()
	if err := update(*path); err != nil {
		fmt.Fprintln(os.Stderr, "configdef/gen:", err)
		os.Exit(1)
	}
}

func update(path string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	updated, err := configdef.UpdateREADME(string(old))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if updated == string(old) {
		return nil
	}
	return os.WriteFile(path, []byte(updated), 0o644)
}
