package transfer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocsCarryTheAdaptiveRule: the rule's sentence, built from the
// constants, stands in each document that describes the window (the
// flag help prints it too), line breaks aside.
func TestDocsCarryTheAdaptiveRule(t *testing.T) {
	rule := strings.Join(strings.Fields(AdaptiveRule()), " ")
	for _, doc := range []string{"CONFIG.md", "ARCHITECTURE.md"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "docs", doc))
		if err != nil {
			t.Fatal(err)
		}
		if text := strings.Join(strings.Fields(string(b)), " "); !strings.Contains(text, rule) {
			t.Errorf("docs/%s lacks the window's rule as the code states it (transfer.AdaptiveRule):\n%s", doc, rule)
		}
	}
}
