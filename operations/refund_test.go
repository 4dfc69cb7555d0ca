package operations

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/legacybridge/soapbridge/restbackend"
)

func TestRefundedSum(t *testing.T) {
	assert.Zero(t, refundedSum(nil))
	assert.EqualValues(t, 700, refundedSum([]restbackend.Refund{
		{Amount: 500, State: "FINISHED"}, {Amount: 1000, State: "FAILED"}, {Amount: 200, State: "PENDING"},
	}))
}
