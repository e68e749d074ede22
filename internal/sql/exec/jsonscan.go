package exec

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonValue is one scanned JSON value of a top-level object: a string
// (escapes resolved), a number's text, true/false, null, or a nested
// object or array as its raw text.
type jsonValue struct {
	kind byte // 's' string, 'n' number, 'b' boolean, 'z' null, 'r' raw object/array
	text string
	b    bool
}

var errNotObject = errors.New("not a JSON object")

// scanObject calls fn with each member of the JSON object in data, in
// order. It checks the syntax of the whole document: a trailing
// non-space, an unterminated string or a bad literal is an error.
func scanObject(data []byte, fn func(key string, v jsonValue)) error {
	s := &jscan{d: data}
	s.space()
	if !s.eat('{') {
		return errNotObject
	}
	s.space()
	if s.eat('}') {
		return s.end()
	}
	for {
		s.space()
		if s.peek() != '"' {
			return s.errf("expected a member name")
		}
		key, err := s.str()
		if err != nil {
			return err
		}
		s.space()
		if !s.eat(':') {
			return s.errf("expected ':'")
		}
		s.space()
		v, err := s.value()
		if err != nil {
			return err
		}
		fn(key, v)
		s.space()
		if s.eat(',') {
			continue
		}
		if s.eat('}') {
			return s.end()
		}
		return s.errf("expected ',' or '}'")
	}
}

type jscan struct {
	d []byte
	i int
}

func (s *jscan) errf(format string, args ...any) error {
	return fmt.Errorf("at byte %d: %s", s.i, fmt.Sprintf(format, args...))
}

func (s *jscan) peek() byte {
	if s.i < len(s.d) {
		return s.d[s.i]
	}
	return 0
}

func (s *jscan) eat(c byte) bool {
	if s.peek() == c && s.i < len(s.d) {
		s.i++
		return true
	}
	return false
}

func (s *jscan) space() {
	for s.i < len(s.d) {
		switch s.d[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *jscan) end() error {
	s.space()
	if s.i != len(s.d) {
		return s.errf("data after the object")
	}
	return nil
}

func (s *jscan) value() (jsonValue, error) {
	switch c := s.peek(); {
	case c == '"':
		t, err := s.str()
		return jsonValue{kind: 's', text: t}, err
	case c == '-' || (c >= '0' && c <= '9'):
		start := s.i
		s.i++
		for s.i < len(s.d) {
			c := s.d[s.i]
			if (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' {
				s.i++
				continue
			}
			break
		}
		t := string(s.d[start:s.i])
		if !validNumber(t) {
			return jsonValue{}, s.errf("bad number %q", t)
		}
		return jsonValue{kind: 'n', text: t}, nil
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if len(s.d)-s.i >= len(lit) && string(s.d[s.i:s.i+len(lit)]) == lit {
				s.i += len(lit)
				if lit == "null" {
					return jsonValue{kind: 'z'}, nil
				}
				return jsonValue{kind: 'b', b: lit == "true", text: lit}, nil
			}
		}
	case c == '{' || c == '[':
		start := s.i
		if err := s.skipNested(); err != nil {
			return jsonValue{}, err
		}
		return jsonValue{kind: 'r', text: string(s.d[start:s.i])}, nil
	}
	return jsonValue{}, s.errf("unexpected %q", s.peek())
}

// validNumber checks JSON's number grammar.
func validNumber(t string) bool {
	i := 0
	if i < len(t) && t[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(t) && t[i] >= '0' && t[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(t) && t[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(t) && t[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(t) && (t[i] == 'e' || t[i] == 'E') {
		i++
		if i < len(t) && (t[i] == '+' || t[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(t)
}

func (s *jscan) skipNested() error {
	depth := 0
	for s.i < len(s.d) {
		switch c := s.d[s.i]; c {
		case '"':
			if _, err := s.str(); err != nil {
				return err
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				s.i++
				return nil
			}
		}
		s.i++
	}
	return s.errf("unterminated object or array")
}

// str reads a string at s.i (its opening quote) and resolves escapes.
func (s *jscan) str() (string, error) {
	s.i++ // "
	start := s.i
	for s.i < len(s.d) {
		c := s.d[s.i]
		if c == '"' {
			t := string(s.d[start:s.i])
			s.i++
			return t, nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		s.i++
	}
	// Slow path: escapes.
	buf := append([]byte(nil), s.d[start:s.i]...)
	for s.i < len(s.d) {
		c := s.d[s.i]
		switch {
		case c == '"':
			s.i++
			return string(buf), nil
		case c < 0x20:
			return "", s.errf("control character in a string")
		case c != '\\':
			buf = append(buf, c)
			s.i++
			continue
		}
		if s.i+1 >= len(s.d) {
			break
		}
		e := s.d[s.i+1]
		s.i += 2
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return "", s.errf("bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				if s.i+1 < len(s.d) && s.d[s.i] == '\\' && s.d[s.i+1] == 'u' {
					s.i += 2
					r2, ok := s.hex4()
					if !ok {
						return "", s.errf("bad \\u escape")
					}
					r = utf16.DecodeRune(r, r2)
				} else {
					r = utf8.RuneError
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", s.errf("bad escape \\%c", e)
		}
	}
	return "", s.errf("unterminated string")
}

func (s *jscan) hex4() (rune, bool) {
	if s.i+4 > len(s.d) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(s.d[s.i:s.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	s.i += 4
	return rune(n), true
}
