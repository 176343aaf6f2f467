package configdef

import (
	"errors"
	"fmt"
	"strings"
)

// The README's key table sits between these lines, which UpdateREADME
// rewrites.
const (
	readmeBegin = "<!-- configdef: generated from internal/configdef/brokers.go by `go generate ./internal/configdef`; do not edit -->"
	readmeEnd   = "<!-- configdef: end -->"
)

// KeyTable renders the README's key table: a row for each server.properties
// key that has one, in brokerDefs' order.
func KeyTable() string {
	var b strings.Builder
	b.WriteString("| key | default | notes |\n| --- | --- | --- |\n")
	for _, d := range Brokers() {
		if d.Row == nil {
			continue
		}
		keys, def := d.Row.Keys, d.Row.Default
		if keys == "" {
			keys = "`" + d.Name + "`"
		}
		if def == "" {
			def = "`" + d.Default + "`"
		}
		if d.Row.Notes == "" {
			fmt.Fprintf(&b, "| %s | %s | |\n", keys, def)
		} else {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", keys, def, d.Row.Notes)
		}
	}
	return b.String()
}

// UpdateREADME returns readme with the text between its marker lines
// replaced by KeyTable, set off by blank lines so Markdown sees a table.
func UpdateREADME(readme string) (string, error) {
	begin := strings.Index(readme, readmeBegin+"\n")
	if begin < 0 {
		return "", errors.New("README has no line " + readmeBegin)
	}
	start := begin + len(readmeBegin) + 1
	end := strings.Index(readme[start:], readmeEnd+"\n")
	if end < 0 {
		return "", errors.New("README has no line " + readmeEnd + " after " + readmeBegin)
	}
	return readme[:start] + "\n" + KeyTable() + "\n" + readme[start+end:], nil
}
