// Command wordcount counts the words of text files (or of a built-in
// sample when none are given) and prints the final count per word, or,
// with -output, writes the counts as "word count" lines into part files
// under that directory. Files and the output directory may be local paths
// or URIs of the job's file systems (hdfs://namenode:8020/path on a
// cluster), as with Flink's WordCount:
//
//	go run ./examples/wordcount [-p N] [-output DIR] [files...]
//	sluice run --target yarn-application wordcount -output hdfs:///user/me/counts hdfs:///user/me/book.txt
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"

	"github.com/sluice/sluice/file"
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
	output := flag.String("output", "", "directory (or URI) to write the counts to (default: print them)")
	flag.Parse()
	opts := []stream.Option{stream.WithRuntimeMode(stream.Automatic)}
	if *par > 0 {
		opts = append(opts, stream.WithParallelism(*par))
	}
	env := stream.NewEnvironment(opts...)
	var lines stream.DataStream[string]
	if flag.NArg() > 0 {
		lines = file.ReadTextFile(env, flag.Args()...)
	} else {
		lines = stream.FromSlice(env, sample)
	}
	counts := Build(lines)
	if *output != "" {
		stream.SinkToCommitting(counts, file.ForRowFormat(*output, func(wc WordCount, w io.Writer) error {
			_, err := fmt.Fprintf(w, "%s %d\n", wc.Word, wc.Count)
			return err
		}).WithBucketAssigner(file.BasePathBucketAssigner[WordCount]())).Name("Counts").UID("counts-file")
	} else {
		stream.Print(counts)
	}
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
