import Testing

@Test func placeholderHTTPServer() { #expect(Bool(true)) }
