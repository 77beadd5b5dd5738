package plugin

import (
	"slices"
	"testing"
	"time"
)

func TestAccessors(t *testing.T) {
	p := &Plugin{Manifest: Manifest{Harnesses: []Harness{{Name: "shop", Tools: []string{"lookup_order"}}}}}
	orders := &Agent{Name: "orders", Runtime: "harness:shop", Limits: Limits{Timeout: "90s"}}
	chat := &Agent{Name: "chat", Runtime: "harness:shop"}
	chat.Harness.Tools = []string{}
	p.Agents = []*Agent{chat, orders}

	if got := p.Tools(orders); !slices.Equal(got, []string{"lookup_order"}) {
		t.Errorf("orders' tools %v: the harness's when the agent lists none", got)
	}
	if got := p.Tools(chat); got == nil || len(got) != 0 {
		t.Errorf("chat's tools %v: an empty list is the agent's own, not the harness's", got)
	}
	if orders.HarnessName() != "shop" || p.Harness("shop") == nil || p.Harness("nope") != nil {
		t.Error("harness lookup")
	}
	if p.Agent("orders") != orders || p.Agent("nope") != nil || !slices.Equal(p.AgentNames(), []string{"chat", "orders"}) {
		t.Error("agent lookup")
	}
	if orders.Limits.TimeoutDuration() != 90*time.Second || chat.Limits.TimeoutDuration() != 0 {
		t.Error("timeouts")
	}
}
