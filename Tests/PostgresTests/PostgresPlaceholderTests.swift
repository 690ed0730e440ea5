import Testing

@Test func placeholderPostgres() { #expect(Bool(true)) }
