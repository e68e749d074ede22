//go:build integration

package flinksql_test

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sluice/sluice/integration/flinksql"
)

// row is one output record in canonical form.
type row struct{ key, value string }

func canonRecords(recs []record, semantic bool) ([]row, error) {
	out := make([]row, len(recs))
	for i, r := range recs {
		var err error
		if r.key != nil {
			if out[i].key, err = flinksql.CanonicalJSON(r.key, semantic); err != nil {
				return nil, fmt.Errorf("key at offset %d: %w", r.offset, err)
			}
		}
		if out[i].value, err = flinksql.CanonicalJSON(r.value, semantic); err != nil {
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
