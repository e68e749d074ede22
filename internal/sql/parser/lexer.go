package parser

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokKind is the kind of a lexical token.
type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tQuotedIdent // `name`
	tString      // 'text'
	tNumber
	tOp // punctuation and operators
)

func (k tokKind) String() string {
	switch k {
	case tEOF:
		return "end of input"
	case tIdent, tQuotedIdent:
		return "identifier"
	case tString:
		return "string literal"
	case tNumber:
		return "number"
	}
	return "symbol"
}

// token is one lexical token: its kind, its text (a string literal's and a
// quoted identifier's without quotes, escapes resolved) and where it starts.
type token struct {
	kind tokKind
	text string
	pos  Pos
}

// upper is an identifier's text in upper case, for keyword matching.
func (t token) upper() string { return strings.ToUpper(t.text) }

func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of input"
	case tString:
		return fmt.Sprintf("string '%s'", t.text)
	case tQuotedIdent:
		return fmt.Sprintf("identifier `%s`", t.text)
	}
	return fmt.Sprintf("%q", t.text)
}

// lex splits src into tokens. Comments (-- to the end of the line, /* */)
// and white space separate tokens.
func lex(src string) ([]token, error) {
	var toks []token
	line, col := 1, 1
	i := 0
	adv := func(n int) {
		for k := 0; k < n && i < len(src); k++ {
			if src[i] == '\n' {
				line++
				col = 1
			} else if src[i] < 0x80 || src[i] >= 0xC0 {
				col++
			}
			i++
		}
	}
	for i < len(src) {
		c := src[i]
		pos := Pos{Line: line, Col: col, Offset: i}
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			adv(1)
		case c == '-' && i+1 < len(src) && src[i+1] == '-':
			for i < len(src) && src[i] != '\n' {
				adv(1)
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return nil, errorAt(src, pos, "unterminated comment")
			}
			adv(end + 4)
		case c == '\'':
			var b strings.Builder
			adv(1)
			for {
				if i >= len(src) {
					return nil, errorAt(src, pos, "unterminated string literal")
				}
				if src[i] == '\'' {
					if i+1 < len(src) && src[i+1] == '\'' {
						b.WriteByte('\'')
						adv(2)
						continue
					}
					adv(1)
					break
				}
				b.WriteByte(src[i])
				adv(1)
			}
			toks = append(toks, token{kind: tString, text: b.String(), pos: pos})
		case c == '`':
			var b strings.Builder
			adv(1)
			for {
				if i >= len(src) {
					return nil, errorAt(src, pos, "unterminated quoted identifier")
				}
				if src[i] == '`' {
					if i+1 < len(src) && src[i+1] == '`' {
						b.WriteByte('`')
						adv(2)
						continue
					}
					adv(1)
					break
				}
				b.WriteByte(src[i])
				adv(1)
			}
			if b.Len() == 0 {
				return nil, errorAt(src, pos, "empty quoted identifier")
			}
			toks = append(toks, token{kind: tQuotedIdent, text: b.String(), pos: pos})
		case isDigit(c) || (c == '.' && i+1 < len(src) && isDigit(src[i+1])):
			start := i
			for i < len(src) && isDigit(src[i]) {
				adv(1)
			}
			if i < len(src) && src[i] == '.' {
				adv(1)
				for i < len(src) && isDigit(src[i]) {
					adv(1)
				}
			}
			if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
				j := i + 1
				if j < len(src) && (src[j] == '+' || src[j] == '-') {
					j++
				}
				if j < len(src) && isDigit(src[j]) {
					adv(j - i)
					for i < len(src) && isDigit(src[i]) {
						adv(1)
					}
				}
			}
			if i < len(src) && isIdentStart(src[i]) {
				return nil, errorAt(src, Pos{Line: line, Col: col, Offset: i}, "unexpected %q after number %s", src[i], src[start:i])
			}
			toks = append(toks, token{kind: tNumber, text: src[start:i], pos: pos})
		case isIdentStart(c) || c >= 0x80:
			start := i
			for i < len(src) {
				r, n := utf8.DecodeRuneInString(src[i:])
				if r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r) {
					adv(n)
					continue
				}
				break
			}
			if i == start {
				r, _ := utf8.DecodeRuneInString(src[i:])
				return nil, errorAt(src, pos, "unexpected character %q", r)
			}
			toks = append(toks, token{kind: tIdent, text: src[start:i], pos: pos})
		default:
			op := ""
			for _, two := range []string{"<>", "<=", ">=", "!=", "||"} {
				if strings.HasPrefix(src[i:], two) {
					op = two
					break
				}
			}
			if op == "" && strings.ContainsRune("(),.;=<>+-*/%", rune(c)) {
				op = string(c)
			}
			if op == "" {
				r, _ := utf8.DecodeRuneInString(src[i:])
				return nil, errorAt(src, pos, "unexpected character %q", r)
			}
			adv(len(op))
			toks = append(toks, token{kind: tOp, text: op, pos: pos})
		}
	}
	toks = append(toks, token{kind: tEOF, pos: Pos{Line: line, Col: col, Offset: len(src)}})
	return toks, nil
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool { return c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
