package main

import (
	"log/slog"

	"github.com/sluice/sluice/hadoop"
)

// logContainerCredentials logs the kinds of the tokens the container's
// credentials hold ($HADOOP_TOKEN_FILE_LOCATION), if any.
func logContainerCredentials(getenv func(string) string, log *slog.Logger) {
	tf := getenv(hadoop.EnvTokenFile)
	if tf == "" {
		return
	}
	creds, err := hadoop.ReadTokenFile(tf)
	if err != nil {
		log.Warn("taskmanager: cannot read the container's credentials", "err", err)
		return
	}
	var kinds []string
	for _, a := range creds.TokenAliases() {
		t, _ := creds.Token(a)
		kinds = append(kinds, t.Kind)
	}
	log.Info("taskmanager: container credentials", "token_kinds", kinds)
}
