<?php
// Reads a SOAP reply file the way PHP ext/soap would receive it from the
// service (non-WSDL mode: values are typed by xsi:type only) and prints the
// result, or the fault, as JSON. Usage: php readreply.php REPLY.xml OPERATION
class FileReplyClient extends SoapClient {
    public string $reply = '';
    public function __doRequest(string $request, string $location, string $action, int $version, bool $oneWay = false): ?string {
        return $this->reply;
    }
}
$c = new FileReplyClient(null, ['location' => 'http://127.0.0.1:9/none', 'uri' => 'http://axis.web.gopay.cz', 'exceptions' => true]);
$c->reply = file_get_contents($argv[1]);
try {
    $r = $c->__soapCall($argv[2], []);
    echo json_encode(['result' => $r], JSON_UNESCAPED_UNICODE | JSON_PRESERVE_ZERO_FRACTION);
} catch (SoapFault $f) {
    echo json_encode(['faultcode' => $f->faultcode, 'faultstring' => $f->faultstring], JSON_UNESCAPED_UNICODE);
}
