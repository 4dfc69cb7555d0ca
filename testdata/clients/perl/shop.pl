#!/usr/bin/perl
# A legacy e-shop on Perl SOAP::Lite (Debian's libsoap-lite-perl), the way
# Perl shops called EPaymentServiceV2: no WSDL, every value typed by
# SOAP::Lite itself (its default autotyping), so a name with a diacritic
# goes out as xsd:base64Binary and an order number as xsd:int. Signatures
# are made and checked here with Digest::SHA and Crypt::DES_EDE3, written
# independently of the Go code.
#
# Usage: perl shop.pl <czech|historic>
# Environment: BRIDGE_SOAP_URL, SANDBOX_URL, GOID, SECURE_KEY.
# Prints one JSON object of string facts for the Go test.
use strict;
use warnings;
use utf8;

use Crypt::DES_EDE3;
use Digest::SHA qw(sha1_hex);
use Encode qw(encode);
use JSON::PP;
use LWP::UserAgent;
use SOAP::Lite;

binmode STDOUT, ':raw';

sub env_or_die {
    my ($name) = @_;
    my $v = $ENV{$name};
    die "missing environment variable $name\n" unless defined $v && $v ne '';
    return $v;
}

my $GOID = env_or_die('GOID');
my $KEY  = env_or_die('SECURE_KEY');
my %facts;

sub fact { my ($k, $v) = @_; $facts{$k} = defined $v ? "$v" : ''; }

# --- the signature scheme ---------------------------------------------------

sub legacy_trim { my ($s) = @_; $s = '' unless defined $s; $s =~ s/^[ \t\r\n\0\x0B]+|[ \t\r\n\0\x0B]+$//g; return $s; }

sub legacy_hash {
    my ($fields) = @_;
    my $joined = join('|', map { defined $_ ? $_ : '' } @$fields, $KEY);
    return sha1_hex(encode('UTF-8', $joined));
}

sub cipher { return Crypt::DES_EDE3->new(substr($KEY, 0, 24)); }

sub legacy_sign {
    my ($fields) = @_;
    my $plain = legacy_hash($fields); # 40 characters: five blocks, no padding
    my $c = cipher();
    return join '', map { unpack('H*', $c->encrypt(substr($plain, $_ * 8, 8))) } 0 .. 4;
}

sub legacy_verify {
    my ($fields, $sig) = @_;
    return 'missing' unless defined $sig && $sig ne '';
    return 'bad' unless $sig =~ /^[0-9a-fA-F]+$/ && length($sig) % 16 == 0;
    my $raw = pack('H*', $sig);
    my $c = cipher();
    my $plain = join '', map { $c->decrypt(substr($raw, $_ * 8, 8)) } 0 .. length($raw) / 8 - 1;
    $plain =~ s/\0+$//;
    $plain = legacy_trim($plain);
    return $plain eq legacy_hash($fields) ? 'ok' : 'bad';
}

sub bool01 { my ($v) = @_; return '' unless defined $v; return ($v eq '1' || lc($v) eq 'true') ? '1' : '0'; }

sub verify_status {
    my ($s) = @_;
    return legacy_verify([
        $s->{targetGoId}, legacy_trim($s->{productName}), $s->{totalPrice}, $s->{currency}, legacy_trim($s->{orderNumber}),
        bool01($s->{recurrentPayment}), $s->{parentPaymentSessionId}, bool01($s->{preAuthorization}), $s->{result},
        $s->{sessionState}, $s->{sessionSubState}, $s->{paymentChannel},
    ], $s->{encryptedSignature});
}

# --- SOAP::Lite as a shop used it ---------------------------------------------

my $last_request = '';
my $soap = SOAP::Lite
    ->proxy(env_or_die('BRIDGE_SOAP_URL'), timeout => 30)
    ->uri('http://axis.web.gopay.cz')
    ->on_action(sub { '""' });
# What went on the wire, so the test can tell typed values were sent.
$soap->transport->add_handler(request_send => sub { $last_request = $_[0]->content; return; });

sub call {
    my ($op, $part, $value) = @_;
    my $som = $soap->call($op => SOAP::Data->name($part => $value));
    die "SOAP fault in $op: " . $som->faultstring . "\n" if $som->fault;
    return $som->result;
}

# A struct of members in the WSDL's order, each typed by SOAP::Lite.
sub members { my @kv = @_; my @m; while (my ($k, $v) = splice(@kv, 0, 2)) { push @m, SOAP::Data->name($k => $v); } return \SOAP::Data->value(@m); }

sub create {
    my (%c) = @_;
    my $sig = legacy_sign([
        $c{targetGoId}, legacy_trim($c{productName}), $c{totalPrice}, $c{currency}, legacy_trim($c{orderNumber}),
        legacy_trim($c{failedURL}), legacy_trim($c{successURL}), bool01($c{preAuthorization}), bool01($c{recurrentPayment}),
        '', '', '', legacy_trim($c{paymentChannels}),
    ]);
    my $s = call('createPayment', 'paymentCommand', members(
        targetGoId => $c{targetGoId}, productName => $c{productName}, totalPrice => $c{totalPrice},
        currency => $c{currency}, orderNumber => $c{orderNumber}, failedURL => $c{failedURL}, successURL => $c{successURL},
        preAuthorization => $c{preAuthorization}, recurrentPayment => $c{recurrentPayment}, paymentChannels => $c{paymentChannels},
        defaultPaymentChannel => $c{defaultPaymentChannel}, lang => 'cs',
        customerData => members(%{ $c{customerData} }),
        encryptedSignature => $sig,
    ));
    my $wire = $last_request;
    fact('wire.base64Binary', scalar(() = $wire =~ /xsi:type="xsd:base64Binary"/g));
    fact('wire.int', scalar(() = $wire =~ /xsi:type="xsd:int"/g));
    return $s;
}

sub status {
    my ($id) = @_;
    return call('paymentStatus', 'paymentSessionInfo', members(
        targetGoId => $GOID, paymentSessionId => $id, encryptedSignature => legacy_sign([$GOID, $id])));
}

sub status_facts {
    my ($p, $s) = @_;
    fact("$p.result", $s->{result});
    fact("$p.resultDescription", $s->{resultDescription});
    fact("$p.state", $s->{sessionState});
    fact("$p.id", $s->{paymentSessionId});
    fact("$p.productName", $s->{productName});
    fact("$p.paymentChannel", $s->{paymentChannel});
    fact("$p.sig", verify_status($s));
}

sub sandbox_pay {
    my ($id, %body) = @_;
    my $ua = LWP::UserAgent->new(timeout => 10);
    my $r = $ua->post(env_or_die('SANDBOX_URL') . "/sandbox/payments/$id/pay",
        'Content-Type' => 'application/json', Content => encode_json({ outcome => 'success', %body }));
    print STDERR 'sandbox pay: ', $r->status_line, ' ', $r->decoded_content, "\n" unless $r->is_success;
    return $r->code;
}

my %base = (
    targetGoId => $GOID, totalPrice => 12900, currency => 'CZK', orderNumber => 1000 + int(rand(8000)),
    failedURL => 'https://eshop.example/failed', successURL => 'https://eshop.example/success',
    preAuthorization => 'false', recurrentPayment => 'false',
);

my $scenario = $ARGV[0] // '';
if ($scenario eq 'czech') {
    my %c = (%base,
        productName => 'Dárkový poukaz – čaj Šťastná žížala',
        paymentChannels => 'eu_gp_u,cz_kb', defaultPaymentChannel => 'eu_gp_u',
        customerData => { firstName => 'Jiří', lastName => 'Novák', email => 'jiri.novak@example.cz', city => 'Plzeň',
            street => 'Náměstí Republiky 1', postalCode => '30100', countryCode => 'CZE', phoneNumber => '+420777123456' },
    );
    my $s = create(%c);
    status_facts('create', $s);
    fact('create.orderNumber', $s->{orderNumber});
    fact('sent.orderNumber', $c{orderNumber});
    fact('pay.http', sandbox_pay($s->{paymentSessionId}, instrument => 'PAYMENT_CARD'));
    status_facts('status', status($s->{paymentSessionId}));
} elsif ($scenario eq 'historic') {
    # A shop configured years before 2015: every code of its list is of
    # earlier years. The customer pays by the Moneta (formerly GE Money
    # Bank) button.
    my %c = (%base,
        productName => 'Objednávka 7', paymentChannels => 'cz_ge,cz_vb,cz_sms', defaultPaymentChannel => 'cz_ge',
        customerData => { firstName => 'Jiří', lastName => 'Novák', email => 'jiri.novak@example.cz' },
    );
    my $s = create(%c);
    status_facts('create', $s);
    fact('pay.http', sandbox_pay($s->{paymentSessionId}, instrument => 'BANK_ACCOUNT', swift => 'AGBACZPP'));
    status_facts('status', status($s->{paymentSessionId}));
} else {
    die "usage: perl shop.pl <czech|historic>\n";
}
print encode('UTF-8', JSON::PP->new->canonical->encode(\%facts)), "\n";
