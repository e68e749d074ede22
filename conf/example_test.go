package conf_test

import (
	"errors"
	"fmt"

	"github.com/sluice/sluice/conf"
)

func Example() {
	file, err := conf.ParseYAML("config.yaml", []byte(`
paralelism.default: 4
execution:
  checkpointing:
    interval: 10 s
    mode: exactly_once
taskmanager.memory.process.size: 1.5g
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	c := file.Merge(conf.FromDynamicProperties([]string{"taskmanager.numberOfTaskSlots=0"}))

	warnings, err := c.Validate()
	for _, w := range warnings {
		fmt.Println("warning:", w)
	}
	var invalid *conf.ValidationError
	if errors.As(err, &invalid) {
		for _, p := range invalid.Problems {
			fmt.Printf("problem: %s | %s | %q\n", p.Source, p.Key, p.Value)
		}
	}
	fmt.Println(conf.Get(c, conf.CheckpointingInterval), conf.Get(c, conf.CheckpointingMode))
	// Output:
	// warning: unknown key "paralelism.default" (config.yaml:2); did you mean "parallelism.default"?
	// problem: config.yaml:7 | taskmanager.memory.process.size | "1.5g"
	// problem: -D | taskmanager.numberOfTaskSlots | "0"
	// 10s EXACTLY_ONCE
}
