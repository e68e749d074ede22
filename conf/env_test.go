package conf_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/sluice/sluice/conf"
)

func TestDynamicPropertiesEnv(t *testing.T) {
	props := []string{"parallelism.default=4", "yarn.tags=a,b", "pipeline.name=word count", "empty="}
	s, err := conf.JoinDynamicProperties(props)
	if err != nil {
		t.Fatal(err)
	}
	if got := conf.SplitDynamicProperties(s); !reflect.DeepEqual(got, props) {
		t.Fatalf("round trip: %q", got)
	}
	if got := conf.SplitDynamicProperties("a=1\r\n\n  \nb=2\n"); !reflect.DeepEqual(got, []string{"a=1", "b=2"}) {
		t.Fatalf("blank lines and CRLF: %q", got)
	}
	if got := conf.SplitDynamicProperties(""); got != nil {
		t.Fatalf("empty: %q", got)
	}
	_, err = conf.JoinDynamicProperties([]string{"pipeline.name=two\nlines"})
	var ve *conf.ValueError
	if !errors.As(err, &ve) {
		t.Fatalf("a line break: %v", err)
	}
	c, _, err := conf.Load(conf.Sources{Dynamic: conf.SplitDynamicProperties(s)})
	if err != nil || conf.Get(c, conf.ParallelismDefault) != 4 {
		t.Fatalf("loading them: %v", err)
	}
}
