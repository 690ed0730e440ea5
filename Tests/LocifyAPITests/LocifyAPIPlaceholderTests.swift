import Testing

@Test func placeholderLocifyAPI() { #expect(Bool(true)) }
