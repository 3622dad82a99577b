// Package declaredfeatures is NodeDeclaredFeatures as Kubernetes 1.36 knows it: the
// component-helpers framework over 1.36's feature registry, for the control plane's
// admission plugin and scheduler filter and for what minilet declares and admits.
package declaredfeatures

import (
	"k8s.io/apimachinery/pkg/util/version"
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"
	"k8s.io/component-helpers/nodedeclaredfeatures/features/extendwebsocketstokubelet"
	"k8s.io/component-helpers/nodedeclaredfeatures/features/inplacepodresize"
	"k8s.io/component-helpers/nodedeclaredfeatures/features/restartallcontainers"
	"k8s.io/component-helpers/nodedeclaredfeatures/features/usernamespaceshostnetwork"
	"k8s.io/component-helpers/nodedeclaredfeatures/types"
)

// Version is the Kubernetes version requirements are inferred for (a feature past its
// maximum version is no longer required).
var Version = version.MustParseGeneric("1.36.3")

// Framework knows the features of 1.36's registry only: the newer component-helpers we
// build with lists later releases' too, which 1.36 would not require.
var Framework = ndf.New([]types.Feature{
	restartallcontainers.Feature,
	inplacepodresize.PodLevelResourcesResizeFeature,
	extendwebsocketstokubelet.Feature,
	inplacepodresize.NonSidecarInitContainerResizeFeature,
	usernamespaceshostnetwork.Feature,
})
