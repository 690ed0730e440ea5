import Testing

@Test func placeholderLocify() { #expect(Bool(true)) }
