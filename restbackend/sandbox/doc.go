// Package sandbox is a payment gateway that speaks the REST interface of the
// real one (the server side of package restbackend), so the bridge, its
// tests and a developer work offline. It is lenient where the real gateway
// is (numbers and booleans sent as JSON strings, vat_rate and ean in both
// forms) and strict where it is (unknown fields, enums, mandatory fields).
// It keeps its state in memory, or in a JSON file (Options.StateFile) that
// survives restarts. Scenario controls (magic amounts, order numbers and
// card numbers; injected faults; POST counters) are described in
// docs/sandbox-controls.md.
//
// # Endpoints
//
// REST, under /api (bearer token from the token call on every call but it):
//
//	POST /api/oauth2/token                                      Basic client id:secret; grant_type, scope
//	POST /api/payments/payment                                  create (scope payment-create or payment-all)
//	GET  /api/payments/payment/{id}                             status
//	POST /api/payments/payment/{id}/refund                      form amount, or JSON {amount, items, eet}
//	GET  /api/payments/payment/{id}/refunds                     refund history {id, amount, currency, state SUCCESS|FAILED|REQUESTED, date_requested, date_last_change}
//	POST /api/payments/payment/{id}/create-recurrence           ON_DEMAND follow-up: replied CREATED, charged right after
//	POST /api/payments/payment/{id}/void-recurrence
//	POST /api/payments/payment/{id}/capture                     no body: whole; JSON amount/items(/eet): partial
//	POST /api/payments/payment/{id}/void-authorization
//	GET  /api/eshops/eshop/{goid}/payment-instruments/{currency}
//	GET  /api/eshops/eshop/{goid}/payment-instruments           every currency, keyed by currency
//	GET|DELETE /api/payments/cards/{card_token}                 a stored card (payer.request_card_token or verify_pin)
//	POST /api/accounts/account-statement                        Options.StatementFormats (CSV_A, CSV_B by default; all with AllStatementFormats)
//
// The customer's side:
//
//	GET|POST /gw/v3/{token}     gw_url: the payment page (CS/SK in Czech, otherwise English)
//	GET /gp-gw/js/embed.js      inline variant: opens gw_url in an overlay
//	GET /gp-gw/images/{code}.svg, {code}@2x.svg   instrument and bank logos
//
// Test helpers (no authentication; JSON bodies optional):
//
//	POST /sandbox/payments/{id}/pay     {"outcome":"success"|"declined"|"3ds_failed","instrument":"PAYMENT_CARD","swift":"KOMBCZPP","card":"4188030000000003"}
//	POST /sandbox/payments/{id}/wait    offline transfer chosen (_102); with an online swift or another instrument: _101
//	POST /sandbox/payments/{id}/cancel  the customer cancels
//	GET  /sandbox/payments/{id}         the status reply of any payment
//	POST /sandbox/clock/advance         {"seconds":N}: moves the clock and runs what became due
//	GET  /sandbox/clock                 {"now":"…"}
//	POST|GET|DELETE /sandbox/faults     arm, list, disarm injected faults (Gateway.InjectFault)
//	GET  /sandbox/stats                 REST POSTs received and performed, by path (Gateway.Stats)
//
// Go tests use Gateway.Act (same as the helpers), a ManualClock (its Advance
// runs what became due before returning) and Gateway.RunDue.
//
// With a ManualClock nothing happens by itself: a test makes the scheduler
// pass run with clock.Advance(d) (Advance(0) runs what is due now),
// g.RunDue() or POST /sandbox/clock/advance {"seconds":0}. With real time
// (Options.Clock nil) a scheduler runs every second and right after an
// ON_DEMAND create-recurrence reply.
//
// # Life cycle
//
//	CREATED ─pay card/wallet──────────▶ PAID (card: payer.payment_card)
//	        ─pay bank button──────────▶ PAID _3001 (payer.bank_account)
//	        ─pay, preauthorization────▶ AUTHORIZED ─capture──▶ PAID (amount = captured)
//	                                               ─void-authorization, or 4 days──▶ CANCELED
//	        ─wait (offline transfer)──▶ PAYMENT_METHOD_CHOSEN _102 ─pay──▶ PAID _3001
//	        ─card declined / 3DS──────▶ CANCELED _5006 / _5009 (bank refused: _3003)
//	        ─cancel───────────────────▶ CANCELED
//	        ─7 days unpaid────────────▶ TIMEOUTED
//	PAID ─refund part──▶ PARTIALLY_REFUNDED ─refund rest──▶ REFUNDED
//
// Recurring payments start (recurrence_state STARTED) when the initiating
// payment is paid; DAY/WEEK/MONTH charge child payments (parent_id, PAID by
// the stored card) every period × cycle after that, while the charge falls
// on or before recurrence_date_to (Prague), then STOPPED. ON_DEMAND
// create-recurrence answers the child CREATED (parent_id, PAYMENT_CARD), as
// the real gateway does, and schedules the charge of the stored card as due
// at once: the next scheduler pass makes the child PAID (with its card) and
// notifies its id. void-recurrence stops at once. Every change of state or sub-state, and every refund, is announced to
// notification_url with id added (GET), repeated until the merchant answers
// 200, at most 20 calls (about 24 h with the default backoff).
//
// Refusals answer the real service's error list with the published codes
// (errors.go): 100 system error (500), 110 mandatory, 111 wrong format
// (also unknown fields), 116 invalid request (409), 200 unauthorised (401
// token missing/invalid/expired, 403 scope or foreign goid/payment), 202
// wrong credentials (401), 301 payment cannot be created, 303 wrong state,
// 304 not found (404), 330/331 refund not possible, 332 wrong refund amount,
// 333 not enough funds, 340 recurring payment failed, 341 recurrence not
// supported, 342 recurrence stopped, 350/351 capture failed/done, 352/353
// void of authorization failed/done, 360 items do not add up (409).
package sandbox
