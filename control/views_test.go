package control_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// plainViews lists the view types that carry strings and do not encode
// through withBase64, each with why its strings are always UTF-8 or shown
// otherwise.
var plainViews = map[string]string{
	"topicView":          "topic names are ASCII (Kafka's legal characters); config keys are the ones Kafka knows, values checked by their Kafka type",
	"topicPartitionView": "a topic name",
	"recordView":         "keys and values carry their own *Base64 fields (text)",
	"brokerView":         "the broker's own addresses",
	"auditView":          "rule names; findings and refusals are views of their own",
}

// TestEveryViewShowsBytesThatAreNotUTF8: every JSON view of the control
// plane that has a string field shows client bytes that are not UTF-8 in
// base64 beside the text (a MarshalJSON through withBase64), or is listed in
// plainViews with why it need not. It reads the package's source, so a new
// view cannot forget.
func TestEveryViewShowsBytesThatAreNotUTF8(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	withStrings := map[string]bool{}
	marshals := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		ast.Inspect(file, func(n ast.Node) bool {
			switch d := n.(type) {
			case *ast.TypeSpec:
				if !strings.HasSuffix(d.Name.Name, "View") {
					return true
				}
				st, ok := d.Type.(*ast.StructType)
				if !ok {
					withStrings[d.Name.Name] = true // a view of another package's struct
					return true
				}
				for _, fld := range st.Fields.List {
					if s := types(fld.Type); s == "string" || s == "*string" || s == "[]string" {
						withStrings[d.Name.Name] = true
					}
				}
			case *ast.FuncDecl:
				if d.Name.Name == "MarshalJSON" && d.Recv != nil {
					marshals[types(d.Recv.List[0].Type)] = true
				}
			}
			return true
		})
	}
	require.NotEmpty(t, withStrings)
	for name := range withStrings {
		if why, ok := plainViews[name]; ok {
			t.Logf("%s: %s", name, why)
			continue
		}
		assert.True(t, marshals[name], "%s has strings: give it a MarshalJSON through withBase64, or list it in plainViews with why", name)
	}
}

// types returns the source text of a simple type expression.
func types(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.StarExpr:
		return "*" + types(x.X)
	case *ast.ArrayType:
		return "[]" + types(x.Elt)
	}
	return ""
}
