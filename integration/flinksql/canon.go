package flinksql

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"time"
)

// CanonicalJSON is a JSON document rewritten with its object keys sorted. In the
// semantic form numbers are exact rationals and SQL timestamp strings
// ("2026-01-01 00:00:00.5") carry nine fraction digits, so equal values
// written differently compare equal; the strict form keeps every number's
// and string's text as written.
func CanonicalJSON(doc []byte, semantic bool) (string, error) {
	if doc == nil {
		return "null", nil
	}
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "", fmt.Errorf("not JSON: %q: %w", doc, err)
	}
	var b strings.Builder
	writeCanon(&b, v, semantic)
	return b.String(), nil
}

func writeCanon(b *strings.Builder, v any, semantic bool) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(b, "%q:", k)
			writeCanon(b, x[k], semantic)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanon(b, e, semantic)
		}
		b.WriteByte(']')
	case json.Number:
		if r, ok := new(big.Rat).SetString(string(x)); ok && semantic {
			b.WriteString(r.RatString())
			return
		}
		b.WriteString(string(x))
	case string:
		if semantic {
			if ts, err := time.Parse("2006-01-02 15:04:05.999999999", x); err == nil {
				fmt.Fprintf(b, "%q", ts.Format("2006-01-02 15:04:05.000000000"))
				return
			}
		}
		fmt.Fprintf(b, "%q", x)
	default:
		j, _ := json.Marshal(x)
		b.Write(j)
	}
}
