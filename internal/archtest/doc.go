// Package archtest enforces the import rules written in ARCHITECTURE.md.
package archtest
