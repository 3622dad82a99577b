package core_test

import (
	"testing"

	"github.com/minik8s/minik8s/pkg/control/controlplane/controlplanetest"
)

// The tests whose objects fit in a namespace of their own share one miniapi.
func TestMain(m *testing.M) { controlplanetest.Main(m) }
