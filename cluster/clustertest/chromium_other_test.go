//go:build !integration

package clustertest

// chromiumRequired: without -tags integration the dashboard's browser
// tests skip when no Chromium is installed.
const chromiumRequired = false
