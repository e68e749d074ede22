// Command wordcount counts the words of text files (or of a built-in
// sample when none are given) and prints the final count per word.
//
//	go run ./examples/wordcount [-p N] [files...]
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"unicode"

	"github.com/sluice/sluice/stream"
)

// WordCount is one word and how often it was seen.
type WordCount struct {
	Word  string
	Count int64
}

func (w WordCount) String() string { return fmt.Sprintf("(%s,%d)", w.Word, w.Count) }

var sample = []string{
	"To be, or not to be, that is the question:",
	"Whether 'tis nobler in the mind to suffer",
	"The slings and arrows of outrageous fortune,",
	"Or to take arms against a sea of troubles",
	"And by opposing end them.",
}

func main() {
	par := flag.Int("p", 0, "parallelism (default: number of CPUs)")
	flag.Parse()
	opts := []stream.Option{stream.WithRuntimeMode(stream.Automatic)}
	if *par > 0 {
		opts = append(opts, stream.WithParallelism(*par))
	}
	env := stream.NewEnvironment(opts...)
	var lines stream.DataStream[string]
	if flag.NArg() > 0 {
		lines = stream.ReadTextFile(env, flag.Args()...)
	} else {
		lines = stream.FromSlice(env, sample)
	}
	counts := Build(lines)
	stream.Print(counts)
	if _, err := env.Execute("WordCount"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Build is the word-count dataflow: split lines into lower-case words and
// count them per word. In BATCH (and AUTOMATIC with bounded input) only the
// final count per word is emitted.
func Build(lines stream.DataStream[string]) stream.DataStream[WordCount] {
	words := stream.FlatMap(lines, func(line string, out stream.Collector[WordCount]) {
		for _, w := range strings.FieldsFunc(strings.ToLower(line), func(r rune) bool {
			return !unicode.IsLetter(r) && r != '\''
		}) {
			out.Collect(WordCount{w, 1})
		}
	}).Name("Tokenizer")
	return stream.Reduce(stream.KeyBy(words, func(w WordCount) string { return w.Word }), func(a, b WordCount) WordCount {
		return WordCount{a.Word, a.Count + b.Count}
	}).Name("Count").UID("word-count")
}
