package jobservice

import (
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
)

func TestPipelineOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		options map[string]any
		par     int
		bundle  int
	}{
		{"none: the service's defaults", nil, 3, 0},
		{"Python's keys", map[string]any{"beam:option:sluice_parallelism:v1": 2, "beam:option:sluice_bundle_size:v1": 50}, 2, 50},
		{"plain names", map[string]any{"sluice_parallelism": "4", "sluice_bundle_size": 7.0}, 4, 7},
		{"Go's flags", map[string]any{"beam:option:go_options:v1": map[string]any{"options": map[string]any{"sluice_parallelism": "2", "sluice_bundle_size": "9"}}}, 2, 9},
		{"Go's --parallelism", map[string]any{"beam:option:parallelism:v1": 2}, 2, 0},
		{"Go's unset --parallelism (-1)", map[string]any{"beam:option:parallelism:v1": -1}, 3, 0},
		{"sluice_parallelism before parallelism", map[string]any{"beam:option:parallelism:v1": 5, "beam:option:sluice_parallelism:v1": 2}, 2, 0},
		{"not a number", map[string]any{"beam:option:sluice_parallelism:v1": "many", "beam:option:go_options:v1": map[string]any{"options": map[string]any{"sluice_bundle_size": "lots"}}}, 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := structpb.NewStruct(tc.options)
			if err != nil {
				t.Fatal(err)
			}
			if got := parallelism(opts, 3); got != tc.par {
				t.Errorf("parallelism %d, want %d", got, tc.par)
			}
			if got := intOption(opts, "sluice_bundle_size", 0); got != tc.bundle {
				t.Errorf("bundle size %d, want %d", got, tc.bundle)
			}
		})
	}
}
