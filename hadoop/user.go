package hadoop

import (
	"fmt"
	"os/user"
	"strings"
)

// CurrentUser returns the Hadoop user name a SIMPLE-authenticated client
// acts as: $HADOOP_USER_NAME if set, otherwise the operating-system user, as
// Hadoop's UserGroupInformation does without Kerberos.
func CurrentUser(getenv func(string) string) (string, error) {
	if getenv != nil {
		if u := strings.TrimSpace(getenv("HADOOP_USER_NAME")); u != "" {
			return u, nil
		}
	}
	u, err := user.Current()
	if err != nil {
		return "", fmt.Errorf("hadoop: cannot determine the current user (set HADOOP_USER_NAME): %w", err)
	}
	return u.Username, nil
}
