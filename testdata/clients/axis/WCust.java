// paymentStatusWCust through the Axis stubs. Kept apart from Main.java: the
// original WSDL predates the operation, so this file compiles only against a
// WSDL that has it (the harness leaves it out otherwise and the scenario fails
// with ClassNotFoundException).

import bridgeclient.*;

public class WCust {
    public static void run(AxisEPaymentProviderV2 port, EPaymentSessionInfo info, EPaymentCommand cmd) throws Exception {
        EPaymentStatusWCust w = port.paymentStatusWCust(info);
        // Copy into an EPaymentStatus so the usual checks apply, whether the
        // generated class extends EPaymentStatus or repeats its fields.
        EPaymentStatus s = new EPaymentStatus();
        s.setCurrency(w.getCurrency());
        s.setEncryptedSignature(w.getEncryptedSignature());
        s.setOrderNumber(w.getOrderNumber());
        s.setParentPaymentSessionId(w.getParentPaymentSessionId());
        s.setPaymentChannel(w.getPaymentChannel());
        s.setPaymentSessionId(w.getPaymentSessionId());
        s.setPreAuthorization(w.getPreAuthorization());
        s.setProductName(w.getProductName());
        s.setRecurrentPayment(w.getRecurrentPayment());
        s.setResult(w.getResult());
        s.setResultDescription(w.getResultDescription());
        s.setSessionState(w.getSessionState());
        s.setSessionSubState(w.getSessionSubState());
        s.setTargetGoId(w.getTargetGoId());
        s.setTotalPrice(w.getTotalPrice());
        Main.statusFacts("status", s, cmd);

        ECustomerData cd = w.getCustomerData();
        if (cd != null) {
            Main.fact("customer.firstName", cd.getFirstName());
            Main.fact("customer.lastName", cd.getLastName());
            Main.fact("customer.email", cd.getEmail());
            Main.fact("customer.city", cd.getCity());
            Main.fact("customer.countryCode", cd.getCountryCode());
        }
        ECustomerCardData card = w.getCustomerCardData();
        if (card != null) {
            Main.fact("card.cardNumber", card.getCardNumber());
            Main.fact("card.cardExpiration", card.getCardExpiration());
            Main.fact("card.cardBrand", card.getCardBrand());
            Main.fact("card.cardIssuerCountry", card.getCardIssuerCountry());
            Main.fact("card.cardIssuerBank", card.getCardIssuerBank());
        }
    }
}
