package main

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
)

// parseProperties parses text in the java.util.Properties format, the format of Kafka's
// server.properties: key=value, key:value or "key value" pairs; lines whose first
// non-blank character is # or ! are comments; a line ending in an odd number of
// backslashes continues on the next line (whose leading blanks are dropped); and
// \t \n \r \f \uXXXX and \<any char> escapes in keys and values. A later duplicate key
// wins, as in Java. The text is read as UTF-8 rather than Java's ISO-8859-1 because
// config files are written as UTF-8 today and Kafka's keys and values are ASCII.
func parseProperties(text string) (map[string]string, error) {
	props := make(map[string]string)
	lines, numbers := logicalLines(text)
	for i, line := range lines {
		key, value := splitKeyValue(line)
		k, err := unescapeProperty(key)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", numbers[i], err)
		}
		v, err := unescapeProperty(value)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", numbers[i], err)
		}
		props[k] = v
	}
	return props, nil
}

// isPropertyBlank is Java's definition of whitespace in properties files.
func isPropertyBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

// logicalLines joins continued natural lines and drops blank and comment lines. It
// returns each logical line with the number of the natural line it starts on.
func logicalLines(text string) (lines []string, numbers []int) {
	natural := splitNaturalLines(text)
	var cur strings.Builder
	continuing := false
	start := 0
	for i, raw := range natural {
		line := strings.TrimLeft(raw, " \t\f")
		if !continuing {
			// A comment or blank line can only start a logical line, never continue one.
			if line == "" || line[0] == '#' || line[0] == '!' {
				continue
			}
			start = i + 1
		}
		trailing := 0
		for j := len(line) - 1; j >= 0 && line[j] == '\\'; j-- {
			trailing++
		}
		if trailing%2 == 1 {
			cur.WriteString(line[:len(line)-1])
			continuing = true
			continue
		}
		cur.WriteString(line)
		lines = append(lines, cur.String())
		numbers = append(numbers, start)
		cur.Reset()
		continuing = false
	}
	if continuing {
		// A continuation at the end of the text: Java keeps what was read.
		lines = append(lines, cur.String())
		numbers = append(numbers, start)
	}
	return lines, numbers
}

// splitNaturalLines splits on \n, \r and \r\n, the terminators Java recognises.
func splitNaturalLines(text string) []string {
	var out []string
	for len(text) > 0 {
		i := strings.IndexAny(text, "\r\n")
		if i < 0 {
			out = append(out, text)
			break
		}
		out = append(out, text[:i])
		if text[i] == '\r' && i+1 < len(text) && text[i+1] == '\n' {
			i++
		}
		text = text[i+1:]
	}
	return out
}

// splitKeyValue finds the key (up to the first unescaped '=', ':' or blank) and the
// value (after blanks and at most one '=' or ':'), still escaped.
func splitKeyValue(line string) (key, value string) {
	keyLen, valueStart := 0, len(line)
	hasSep, escaped := false, false
	for ; keyLen < len(line); keyLen++ {
		c := line[keyLen]
		if !escaped && (c == '=' || c == ':') {
			valueStart, hasSep = keyLen+1, true
			break
		}
		if !escaped && isPropertyBlank(c) {
			valueStart = keyLen + 1
			break
		}
		escaped = c == '\\' && !escaped
	}
	for ; valueStart < len(line); valueStart++ {
		c := line[valueStart]
		if isPropertyBlank(c) {
			continue
		}
		if !hasSep && (c == '=' || c == ':') {
			hasSep = true
			continue
		}
		break
	}
	return line[:keyLen], line[valueStart:]
}

// unescapeProperty resolves the escapes of the properties format.
func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	var units []uint16 // pending \u code units, joined so surrogate pairs decode
	flush := func() {
		if len(units) > 0 {
			b.WriteString(string(utf16.Decode(units)))
			units = units[:0]
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			flush()
			b.WriteByte(c)
			continue
		}
		i++
		if i == len(s) {
			break // a lone trailing backslash is dropped, as Java does
		}
		c = s[i]
		if c == 'u' {
			if i+5 > len(s) {
				return "", fmt.Errorf("malformed \\uxxxx escape in %q", s)
			}
			u, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf("malformed \\uxxxx escape in %q", s)
			}
			units = append(units, uint16(u))
			i += 4
			continue
		}
		flush()
		switch c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		default:
			b.WriteByte(c)
		}
	}
	flush()
	return b.String(), nil
}
