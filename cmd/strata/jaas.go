package main

import (
	"errors"
	"fmt"
	"strings"
)

// This file parses a sasl.jaas.config value as Kafka's JaasConfig does:
//
//	<loginModuleClass> <controlFlag> (<optionName>=<optionValue>)*;
//
// with java.io.StreamTokenizer configured as JaasConfig configures it, so
// the same strings parse (or fail) the same way: words of letters, digits,
// '.', '-', '_' and '$'; values in double or single quotes with Java's
// backslash escapes; // and /* */ comments; an unquoted number is no value.

// jaasEntry is one login module of a JAAS configuration.
type jaasEntry struct {
	module  string
	flag    string // required, requisite, sufficient or optional, lower case
	options map[string]string
}

// jaasToken kinds beyond an ordinary character's own rune.
const (
	jaasEOF    = -1
	jaasWord   = -3
	jaasNumber = -2
)

// jaasTokenizer is the part of StreamTokenizer JaasConfig uses.
type jaasTokenizer struct {
	in   []rune
	pos  int
	kind rune    // jaasEOF, jaasWord, jaasNumber, a quote rune or an ordinary rune
	sval *string // a word's or a quoted string's text; nil otherwise
}

func (t *jaasTokenizer) read() rune {
	if t.pos >= len(t.in) {
		t.pos = len(t.in) + 1
		return -1
	}
	r := t.in[t.pos]
	t.pos++
	return r
}

func (t *jaasTokenizer) unread(r rune) {
	if r >= 0 {
		t.pos--
	}
}

func jaasWhitespace(r rune) bool { return r >= 0 && r <= ' ' }

func jaasAlpha(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= 160 || r == '-' || r == '_' || r == '$'
}

func jaasDigit(r rune) bool { return r >= '0' && r <= '9' || r == '.' || r == '-' }

// next reads the next token.
func (t *jaasTokenizer) next() rune {
	t.sval = nil
	for {
		c := t.read()
		for jaasWhitespace(c) {
			c = t.read()
		}
		switch {
		case c < 0:
			t.kind = jaasEOF
		case jaasDigit(c):
			if c == '-' {
				d := t.read()
				t.unread(d)
				if d != '.' && (d < '0' || d > '9') {
					t.kind = '-'
					return t.kind
				}
				c = t.read()
			}
			dot := false
			for c == '.' && !dot || c >= '0' && c <= '9' {
				dot = dot || c == '.'
				c = t.read()
			}
			t.unread(c)
			t.kind = jaasNumber
		case jaasAlpha(c):
			var b strings.Builder
			for jaasAlpha(c) || jaasDigit(c) {
				b.WriteRune(c)
				c = t.read()
			}
			t.unread(c)
			s := b.String()
			t.kind, t.sval = jaasWord, &s
		case c == '"' || c == '\'':
			s := t.quoted(c)
			t.kind, t.sval = c, &s
		case c == '/':
			switch d := t.read(); d {
			case '*':
				prev := rune(0)
				for d = t.read(); d != '/' || prev != '*'; d = t.read() {
					if d < 0 {
						t.kind = jaasEOF
						return t.kind
					}
					prev = d
				}
			default:
				// "//", and a lone '/' too: it is StreamTokenizer's comment
				// character. As there, the character after it is skipped.
				for d = t.read(); d != '\n' && d != '\r' && d >= 0; d = t.read() {
				}
			}
			continue
		default:
			t.kind = c
		}
		return t.kind
	}
}

// quoted reads a string after its opening quote q, up to the closing quote
// or the end of the line, with Java's escapes.
func (t *jaasTokenizer) quoted(q rune) string {
	var b strings.Builder
	d := t.read()
	for d >= 0 && d != q && d != '\n' && d != '\r' {
		c := d
		if d == '\\' {
			c = t.read()
			if c >= '0' && c <= '7' {
				first := c
				c -= '0'
				d = t.read()
				if d >= '0' && d <= '7' {
					c = c<<3 + d - '0'
					d = t.read()
					if d >= '0' && d <= '7' && first <= '3' {
						c = c<<3 + d - '0'
						d = t.read()
					}
				}
				b.WriteRune(c)
				continue
			}
			switch c {
			case 'a':
				c = 7
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'v':
				c = '\v'
			case -1:
				return b.String()
			}
		}
		b.WriteRune(c)
		d = t.read()
	}
	if d != q {
		t.unread(d)
	}
	return b.String()
}

// parseJAAS reads a JAAS configuration string into its login modules, with
// JaasConfig's messages.
func parseJAAS(s string) ([]jaasEntry, error) {
	t := &jaasTokenizer{in: []rune(s)}
	var entries []jaasEntry
	for t.next() != jaasEOF {
		e, err := parseJAASEntry(t)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	if len(entries) == 0 {
		return nil, errors.New("Login module not specified in JAAS config")
	}
	return entries, nil
}

func parseJAASEntry(t *jaasTokenizer) (jaasEntry, error) {
	if t.sval == nil {
		return jaasEntry{}, errors.New("Login module class name not specified in JAAS config")
	}
	e := jaasEntry{module: *t.sval, options: map[string]string{}}
	if t.next() == jaasEOF {
		return e, errors.New("Login module control flag not specified in JAAS config")
	}
	if t.sval == nil {
		return e, errors.New("Login module control flag is not available in the JAAS config")
	}
	switch flag := strings.ToLower(*t.sval); flag {
	case "required", "requisite", "sufficient", "optional":
		e.flag = flag
	default:
		return e, fmt.Errorf("Invalid login module control flag '%s' in JAAS config", *t.sval)
	}
	for t.next() != jaasEOF && t.kind != ';' {
		key := "null"
		if t.sval != nil {
			key = *t.sval
		}
		if t.next() != '=' || t.next() == jaasEOF || t.sval == nil {
			return e, fmt.Errorf("Value not specified for key '%s' in JAAS config", key)
		}
		e.options[key] = *t.sval
	}
	if t.kind != ';' {
		return e, errors.New("JAAS config entry not terminated by semi-colon")
	}
	return e, nil
}
