import Testing

@Test func placeholderFirebaseAdmin() { #expect(Bool(true)) }
