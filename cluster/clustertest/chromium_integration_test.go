//go:build integration

package clustertest

// chromiumRequired: under -tags integration (CI's `make integration`, which
// installs Chromium with integration/scripts/chromium.sh) a missing
// Chromium fails the dashboard's browser tests.
const chromiumRequired = true
