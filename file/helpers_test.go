package file_test

import (
	"log/slog"

	"github.com/sluice/sluice/stream"
)

// asyncTestEnv is an environment whose logs are discarded.
func asyncTestEnv(opts ...stream.Option) *stream.Environment {
	return stream.NewEnvironment(append([]stream.Option{stream.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
}

func asyncInputs(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
