package main

import (
	"fmt"
	"net"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/sluice/sluice/internal/beam/jobservice"
)

// beamCommand is the Beam portable runner: a job server Beam SDKs submit
// pipelines to (Python: --runner=PortableRunner --job_endpoint=HOST:PORT;
// Go: --runner=universal --endpoint=HOST:PORT).
func beamCommand() *cli.Command {
	return &cli.Command{
		Name:  "beam",
		Usage: "run Apache Beam pipelines on Sluice",
		Subcommands: []*cli.Command{{
			Name:      "job-server",
			Usage:     "serve the Beam job API; pipelines run on the embedded engine until SIGINT",
			UsageText: "sluice beam job-server [--host localhost] [--port 8099] [--parallelism 1] [--bundle-size 1000]",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "host", Value: "localhost", Usage: "address to listen on"},
				&cli.IntFlag{Name: "port", Value: 8099, Usage: "job service port (0: any free port)"},
				&cli.IntFlag{Name: "parallelism", Value: 1, Usage: "parallelism of a job's operators unless its --sluice_parallelism (or Go's --parallelism) option says otherwise"},
				&cli.IntFlag{Name: "bundle-size", Value: 1000, Usage: "most elements per bundle sent to an SDK harness unless --sluice_bundle_size says otherwise"},
			},
			Action: func(c *cli.Context) error {
				if c.Args().Present() {
					return usagef(c, "beam job-server takes no arguments, got %q", c.Args().Slice())
				}
				if p := c.Int("port"); p < 0 || p > 65535 {
					return usagef(c, "--port %d is not a port", p)
				}
				svc, err := jobservice.Listen(net.JoinHostPort(c.String("host"), strconv.Itoa(c.Int("port"))), jobservice.Options{
					Parallelism: c.Int("parallelism"), BundleSize: c.Int("bundle-size"), Log: processLogger(c, "beam-job-server"),
				})
				if err != nil {
					return err
				}
				ep := svc.Endpoint()
				fmt.Fprintf(c.App.Writer, "Beam job service listening on %s (Python: --runner=PortableRunner --job_endpoint=%s --environment_type=LOOPBACK; Go: --runner=universal --endpoint=%s --environment_type=LOOPBACK)\n", ep, ep, ep)
				<-c.Context.Done()
				fmt.Fprintln(c.App.Writer, "shutting down the Beam job service")
				return svc.Close()
			},
		}},
	}
}
