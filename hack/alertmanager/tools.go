//go:build tools

// Package tools records the alertmanager command this module builds so that go mod tidy keeps its dependencies.
package tools

import (
	_ "github.com/prometheus/alertmanager/cmd/alertmanager"
)
