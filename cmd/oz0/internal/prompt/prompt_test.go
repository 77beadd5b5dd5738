package prompt

import (
	"testing"

	tea "charm.land/bubbletea/v2"
	"charm.land/huh/v2"
)

// Esc and Ctrl-C back out of a form (huh's own default is Ctrl-C only); other keys do not.
func TestFormBacksOutOnEscAndCtrlC(t *testing.T) {
	for _, c := range []struct {
		name  string
		key   tea.KeyPressMsg
		abort bool
	}{
		{"esc", tea.KeyPressMsg{Code: tea.KeyEscape}, true},
		{"ctrl+c", tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}, true},
		{"y", tea.KeyPressMsg{Code: 'y', Text: "y"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var answer string
			form := newForm(huh.NewGroup(huh.NewInput().Title("Name").Value(&answer)))
			form.Init()
			form.Update(c.key)
			if got := form.State == huh.StateAborted; got != c.abort {
				t.Errorf("after %s the form's state is %v; want aborted=%v", c.key, form.State, c.abort)
			}
		})
	}
}
