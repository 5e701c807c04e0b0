// Package layers holds no code: its test checks that every package of the
// module imports only packages of the layers below its own, from the table
// in layers_test.go.
package layers
