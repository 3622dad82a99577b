package registry

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MustConvert converts between an API type's v1 and internal versions, which is lossless
// by construction: a failure is a bug in the scheme.
func MustConvert(scheme *runtime.Scheme, in, out any) {
	if err := scheme.Convert(in, out, nil); err != nil {
		panic(fmt.Sprintf("converting %T to %T: %v", in, out, err))
	}
}

// InternalUpdateValidation runs an upstream strategy's ValidateUpdate on the internal
// versions of obj and old. The generic store checks the metadata update itself, knowing a
// deletion may set deletionTimestamp; the strategy would refuse it, so old takes obj's.
func InternalUpdateValidation[T interface {
	runtime.Object
	metav1.Object
}](internal func(runtime.Object) T, validate func(context.Context, runtime.Object, runtime.Object) field.ErrorList) func(obj, old runtime.Object) field.ErrorList {
	return func(obj, old runtime.Object) field.ErrorList {
		now, was := internal(obj), internal(old)
		was.SetDeletionTimestamp(now.GetDeletionTimestamp())
		was.SetDeletionGracePeriodSeconds(now.GetDeletionGracePeriodSeconds())
		return validate(context.Background(), now, was)
	}
}
