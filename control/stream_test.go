package control

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStreamedArraysReadAsBefore: a streamed array is byte for byte what
// writeJSON writes for the whole slice (the body clients parsed before
// lists were streamed), empty, with one element and with many; an array
// nested in an object is what json.MarshalIndent writes for it there.
func TestStreamedArraysReadAsBefore(t *testing.T) {
	t.Parallel()
	type item struct {
		Name  string         `json:"name"`
		Tags  []string       `json:"tags"`
		Inner map[string]int `json:"inner"`
	}
	for _, items := range [][]item{
		{},
		{{Name: "a"}},
		{{Name: "a", Tags: []string{"x", "y"}, Inner: map[string]int{"k": 1}}, {Name: "b", Tags: []string{}}, {Name: "<&>"}},
	} {
		whole := httptest.NewRecorder()
		writeJSON(whole, 200, items)

		streamed := httptest.NewRecorder()
		st := startStream(streamed)
		st.array(0, func(add func(any) bool) {
			for _, it := range items {
				add(it)
			}
		})
		st.end()
		assert.Equal(t, whole.Body.String(), streamed.Body.String())
		assert.Equal(t, whole.Header().Get("Content-Type"), streamed.Header().Get("Content-Type"))

		nested := httptest.NewRecorder()
		st = startStream(nested)
		st.raw("{\n  \"items\": ")
		st.array(1, func(add func(any) bool) {
			for _, it := range items {
				add(it)
			}
		})
		st.raw("\n}")
		st.end()
		want, err := json.MarshalIndent(struct {
			Items []item `json:"items"`
		}{items}, "", "  ")
		require.NoError(t, err)
		assert.Equal(t, string(want)+"\n", nested.Body.String())
	}
}
