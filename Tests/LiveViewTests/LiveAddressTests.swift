import Testing
@testable import LiveView

@Suite struct LiveAddressTests {
    @Test("an address prints as host:port, IPv6 in brackets")
    func description() {
        #expect(LiveAddress(host: "127.0.0.1", port: 9464).description == "127.0.0.1:9464")
        #expect(LiveAddress(host: "::1", port: 5665).description == "[::1]:5665")
    }
}
