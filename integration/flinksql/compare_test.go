//go:build integration

package flinksql_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strings"
	"time"
)

// canon is a JSON document rewritten with its object keys sorted. In the
// semantic form numbers are exact rationals and SQL timestamp strings
// ("2026-01-01 00:00:00.5") carry nine fraction digits, so equal values
// written differently compare equal; the strict form keeps every number's
// and string's text as written.
func canon(doc []byte, semantic bool) (string, error) {
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

// row is one output record in canonical form.
type row struct{ key, value string }

func canonRecords(recs []record, semantic bool) ([]row, error) {
	out := make([]row, len(recs))
	for i, r := range recs {
		var err error
		if r.key != nil {
			if out[i].key, err = canon(r.key, semantic); err != nil {
				return nil, fmt.Errorf("key at offset %d: %w", r.offset, err)
			}
		}
		if out[i].value, err = canon(r.value, semantic); err != nil {
			return nil, fmt.Errorf("value at offset %d: %w", r.offset, err)
		}
	}
	return out, nil
}

// materialize folds an upsert changelog into its table: the last value of
// each key, tombstones deleting.
func materialize(rows []row) map[string]string {
	t := map[string]string{}
	for _, r := range rows {
		if r.value == "null" {
			delete(t, r.key)
			continue
		}
		t[r.key] = r.value
	}
	return t
}

// multiset is rows as sorted "key value" lines.
func multiset(rows []row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.key + " " + r.value
	}
	slices.Sort(out)
	return out
}

func tableLines(t map[string]string) []string {
	out := make([]string, 0, len(t))
	for k, v := range t {
		out = append(out, k+" "+v)
	}
	slices.Sort(out)
	return out
}

// diffLines describes how got (Sluice's) differs from want (Flink's), both
// sorted, or "" when they are equal.
func diffLines(got, want []string) string {
	if slices.Equal(got, want) {
		return ""
	}
	var only, missing []string
	i, j := 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case j == len(want) || (i < len(got) && got[i] < want[j]):
			only = append(only, got[i])
			i++
		case i == len(got) || want[j] < got[i]:
			missing = append(missing, want[j])
			j++
		default:
			i++
			j++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Sluice %d rows, Flink %d rows", len(got), len(want))
	write := func(title string, ls []string) {
		if len(ls) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n  %s (%d):", title, len(ls))
		for k, l := range ls {
			if k == 8 {
				fmt.Fprintf(&b, "\n    ... %d more", len(ls)-k)
				break
			}
			b.WriteString("\n    " + l)
		}
	}
	write("only Sluice's", only)
	write("only Flink's", missing)
	return b.String()
}

// diffSequence describes where two changelogs part, or "".
func diffSequence(got, want []row) string {
	for i := 0; i < len(got) && i < len(want); i++ {
		if got[i] != want[i] {
			var b strings.Builder
			fmt.Fprintf(&b, "changelogs part at record %d of %d (Sluice) / %d (Flink)", i, len(got), len(want))
			for _, side := range []struct {
				name string
				rs   []row
			}{{"Sluice", got}, {"Flink", want}} {
				fmt.Fprintf(&b, "\n  %s:", side.name)
				for k := max(0, i-2); k < min(len(side.rs), i+4); k++ {
					fmt.Fprintf(&b, "\n    %d: %s %s", k, side.rs[k].key, side.rs[k].value)
				}
			}
			return b.String()
		}
	}
	if len(got) != len(want) {
		return fmt.Sprintf("changelogs: Sluice wrote %d records, Flink %d (equal up to there)", len(got), len(want))
	}
	return ""
}
