package configdef

import (
	"os"
	"strings"
	"testing"
)

// TestREADMECurrent fails when README.md's key table is not what
// brokerDefs generate.
func TestREADMECurrent(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := UpdateREADME(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	if want != string(readme) {
		t.Fatalf("README.md's key table is not current: run go generate ./internal/configdef\nwant:\n%s", KeyTable())
	}
}

func TestUpdateREADME(t *testing.T) {
	in := "# x\n\n" + readmeBegin + "\nstale\n" + readmeEnd + "\nafter\n"
	got, err := UpdateREADME(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := "# x\n\n" + readmeBegin + "\n\n" + KeyTable() + "\n" + readmeEnd + "\nafter\n"; got != want {
		t.Errorf("UpdateREADME = %q, want %q", got, want)
	}
	for _, bad := range []string{"no markers\n", readmeBegin + "\nno end\n", readmeEnd + "\n" + readmeBegin + "\n"} {
		if _, err := UpdateREADME(bad); err == nil || !strings.Contains(err.Error(), "README has no line") {
			t.Errorf("UpdateREADME(%q) error = %v", bad, err)
		}
	}
}
