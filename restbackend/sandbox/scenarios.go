package sandbox

import (
	"regexp"

	"github.com/legacybridge/soapbridge/restbackend"
)

// Magic values, in the style of card processors' test cards: a developer
// (or a bridge test) forces an outcome without code. Amounts are in minor
// units; all of them lie in 666.00–666.99 so that no ordinary test amount
// hits one by chance. docs/sandbox-controls.md lists them for people.
const (
	magicCreateRefused      = 66600 // create payment: 409 301, nothing created
	magicCardDeclined       = 66601 // paying by card (outcome success) is declined: CANCELED _5006
	magicCard3DSFailed      = 66602 // paying by card fails 3-D Secure: CANCELED _5009
	magicBankRefused        = 66603 // paying by bank button is refused: CANCELED _3003
	magicCaptureAccepted    = 66611 // capture of this amount: ACCEPTED, PAID acceptedDelay later
	magicCaptureFailed      = 66612 // capture of this amount: FAILED, still AUTHORIZED
	magicRefundAccepted     = 66621 // refund of this amount: ACCEPTED, history REQUESTED for acceptedDelay
	magicRefundFailed       = 66622 // refund of this amount: FAILED, history FAILED, no money moved
	magicRefundNoFunds      = 66623 // refund of this amount: 409 333, nothing recorded
	magicRecurrenceDeclined = 66631 // create-recurrence of this amount: child CREATED, then declined (CANCELED _5006)
	magicRecurrenceRefused  = 66632 // create-recurrence of this amount: 409 340, no child
)

// Magic card numbers (pay helper "card", or the page's test card).
var magicCards = map[string]string{
	"4000000000000002": subCardDeclined,  // declined by the issuer
	"4000000000000069": "_5004",          // expired card (the sandbox's pick within _5001–_5050)
	"4000000000000127": "_5005",          // wrong CVC (the sandbox's pick)
	"4000000000003063": subCard3DSFailed, // 3-D Secure fails
}

// declineOrder matches an order number that forces a card decline with the
// sub-state it names: "DECLINE_5015-…" gives CANCELED _5015.
var declineOrder = regexp.MustCompile(`^DECLINE(_(?:50[0-4][0-9]|5050|6502|6504))(?:$|[^0-9])`)

// createScenario refuses a create request whose amount asks for it.
func createScenario(amount int64) error {
	if amount == magicCreateRefused {
		return errConflict(codeCreateFailed, "payment of %d cannot be created (sandbox scenario)", amount)
	}
	return nil
}

// scenarioResult is the result of a capture or refund of amount.
func scenarioResult(amount, accepted, failed int64) string {
	switch amount {
	case accepted:
		return restbackend.ResultAccepted
	case failed:
		return restbackend.ResultFailed
	}
	return restbackend.ResultFinished
}

// forcedDecline is the sub-state a scenario imposes on a card payment the
// customer means to pay successfully, or "".
func forcedDecline(p *payment, pan string) string {
	if sub, ok := magicCards[pan]; ok {
		return sub
	}
	if m := declineOrder.FindStringSubmatch(p.req.OrderNumber); m != nil {
		return m[1]
	}
	switch p.req.Amount {
	case magicCardDeclined:
		return subCardDeclined
	case magicCard3DSFailed:
		return subCard3DSFailed
	}
	return ""
}
