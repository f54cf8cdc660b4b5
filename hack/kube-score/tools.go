//go:build tools

// Package tools records the kube-score command this module builds so that go mod tidy keeps its dependencies.
package tools

import (
	_ "github.com/zegl/kube-score/cmd/kube-score"
)
