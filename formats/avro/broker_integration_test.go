//go:build integration

package avro_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluice/sluice/formats/internal/registryserver"
	"github.com/sluice/sluice/integration/kafkabroker"
)

func TestMain(m *testing.M) { os.Exit(kafkabroker.RunMain(m)) }

// The savepoint evolution test on a real Kafka broker and a real registry
// (Apicurio, whose BACKWARD rule admits each version).
func TestThreeVersionsAcrossASavepointRestoreOnARealBrokerAndRegistry(t *testing.T) {
	b := kafkabroker.Shared(t)
	url := registryserver.Start(t)
	topic := fmt.Sprintf("people-%d", time.Now().UnixNano())
	createTopic(t, b.Addr, topic)
	evolutionAcrossSavepoint(t, []string{b.Addr}, url, topic)
}

func createTopic(t *testing.T, addr, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Records months old stay only in a topic that keeps them: with the
	// broker's default retention.ms (7 days) Kafka rolls and deletes the
	// segment of a record stamped 180 days ago within minutes.
	forever := "-1"
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": &forever}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating topic %s: %v", topic, err)
	}
}
