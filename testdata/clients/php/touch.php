<?php
// Loads the WSDL from the bridge, calls touch() and prints the reply as JSON.
require __DIR__ . '/legacy.php';

$client = new_client();
$ret = $client->touch();
echo json_encode(['touch' => (string) $ret, 'functions' => (string) count($client->__getFunctions())]), "\n";
