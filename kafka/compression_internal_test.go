package kafka

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The default must be no compression, as documented (and as Flink's
// KafkaSink): franz-go on its own would compress with snappy.
func TestSinkCompressionCodecs(t *testing.T) {
	for _, tc := range []struct {
		name string
		want kgo.CompressionCodec
	}{
		{"", kgo.NoCompression()},
		{"none", kgo.NoCompression()},
		{"snappy", kgo.SnappyCompression()},
		{"zstd", kgo.ZstdCompression()},
	} {
		got, err := (&sinkConfig{compression: tc.name}).codec()
		if err != nil || !slices.Equal(got, []kgo.CompressionCodec{tc.want}) {
			t.Errorf("codec(%q) = %v, %v; want [%v]", tc.name, got, err, tc.want)
		}
	}
}
