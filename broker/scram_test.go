package broker

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/xdg-go/scram"
)

// TestManyUsers: a broker starts with at most MaxUsers users, and refuses
// more before it derives any credential.
func TestManyUsers(t *testing.T) {
	t.Parallel()
	users := map[string]string{}
	for i := range MaxUsers + 1 {
		users["u"+strconv.Itoa(i)] = "p"
	}
	_, err := New(WithUsers(users))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "1001 SASL users: want at most 1000")
}

// TestDerivedCredentials: the credential derived for a user is RFC 5802's,
// as xdg-go's client derives it from the same password, salt and count, and
// keeps no password.
func TestDerivedCredentials(t *testing.T) {
	t.Parallel()
	c, err := newCredentials(map[string]string{"app": "app-secret"})
	require.NoError(t, err)
	for i, m := range scramMechanisms {
		cred, ok := c.lookup(&scramMechanisms[i], "app")
		require.True(t, ok, m.name)
		assert.Equal(t, scramIterations, cred.iterations)
		assert.Len(t, cred.salt, scramSaltSize)
		client, err := m.generator.NewClientUnprepped("app", "app-secret", "")
		require.NoError(t, err)
		want := client.GetStoredCredentials(scram.KeyFactors{Salt: string(cred.salt), Iters: cred.iterations})
		assert.Equal(t, want.StoredKey, cred.storedKey, m.name)
		assert.Equal(t, want.ServerKey, cred.serverKey, m.name)
	}
	known, ok := c.checkPlain("app", []byte("app-secret"))
	assert.True(t, known && ok)
	_, ok = c.checkPlain("app", []byte("wrong"))
	assert.False(t, ok)
}
