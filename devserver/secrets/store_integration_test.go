package secrets_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/orchestrator-zero/oz0/devserver/secrets"
	"github.com/orchestrator-zero/oz0/devserver/store"
)

// The dev server's wiring: the job store masks with the secrets' masker, and no form of a secret
// value reaches the database files, whatever encoder wrote the event.
func TestStoreNeverHoldsSecrets(t *testing.T) {
	dir := t.TempDir()
	sec, err := secrets.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	key := "sk-ant-api03-Zx9-ünïcode-key"
	if err := sec.Set("ANTHROPIC_API_KEY", key); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st.SetMasker(sec.Masker())
	j, err := st.CreateJob(store.NewJob{Agent: "a", InputText: "use " + key})
	if err != nil {
		t.Fatal(err)
	}
	goJSON, _ := json.Marshal(map[string]string{"line": "key " + key})
	lines := []string{
		string(goJSON),
		`{"line":"key sk-ant-api03-Zx9-\u00fcn\u00efcode-key"}`, // Python's json.dumps
		`{"line":"key sk-ant-api03-Zx9-ünïcode-key"}`,
	}
	for _, l := range lines {
		e, err := st.Append(j.ID, store.EventStderr, json.RawMessage(l))
		if err != nil {
			t.Fatal(err)
		}
		if string(e.Data) != `{"line":"key ***"}` {
			t.Errorf("%s was stored as %s", l, e.Data)
		}
	}
	// A secret set while the store runs is masked from then on.
	sec.Set("OPENAI_API_KEY", "sk-proj-later-set")
	st.Append(j.ID, store.EventLog, json.RawMessage(`{"message":"sk-proj-later-set"}`))
	st.FinishJob(j.ID, store.StatusFailed, "bad key "+key, nil)

	forms := [][]byte{[]byte(key), []byte(`sk-ant-api03-Zx9-\u00fcn`), []byte("sk-proj-later-set"), []byte("sk-ant-api03")}
	check := func(withWAL bool) {
		files, _ := filepath.Glob(filepath.Join(dir, store.DBFile+"*"))
		if withWAL && len(files) < 2 {
			t.Fatalf("database files: %v; want the write-ahead log beside the database", files)
		}
		for _, f := range files {
			b, _ := os.ReadFile(f)
			for _, form := range forms {
				if bytes.Contains(b, form) {
					t.Errorf("%s holds %q", filepath.Base(f), form)
				}
			}
		}
	}
	check(true) // the WAL, while open
	st.Close()
	check(false) // the database, after the checkpoint at close (which removes the WAL)
}
