package stream

import "reflect"

// perSubtask returns the instance of a user function that one parallel
// subtask uses. Flink deserialises a copy of a function per subtask; here a
// pointer to a struct gets a new pointer to a shallow copy of the struct,
// so fields a subtask sets (in Open or while processing) are its own and
// never race with another subtask's. Anything else (a value, such as the
// func-struct adapters ProcessFuncs and friends, or a plain function) is
// used as it is: its methods cannot change it.
//
// The copy is shallow: maps, slices, channels and pointers set before the
// job starts are still shared by every subtask. Create per-subtask
// resources in Open.
func perSubtask[F any](fn F) F {
	v := reflect.ValueOf(fn)
	if !v.IsValid() || v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return fn
	}
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem())
	f, ok := cp.Interface().(F)
	if !ok {
		return fn // unreachable: *S implements what the original *S did
	}
	return f
}
