import Testing

@Test func placeholderJSON() { #expect(Bool(true)) }
