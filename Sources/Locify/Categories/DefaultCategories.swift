import FoundationEssentials

/// The categories every new user starts with, under deterministic ids (UUIDv5 in the RFC 4122
/// URL namespace of `locify:default-category:<Name>`), so a device that created one offline
/// uses the same id and defaults never duplicate.
public enum DefaultCategories {
    /// Name and id of each default category, in the order they are provisioned.
    public static let all: [(name: String, id: UUID)] = [
        ("Restaurant", uuid(0x1f3599be, 0x6e0e, 0x5cf8, 0xaa59, 0xb97d_fdc4_6aec)),
        ("Cafe", uuid(0xa1050188, 0xe456, 0x5998, 0x8293, 0xa282_220c_9930)),
        ("Tourist Attraction", uuid(0x6c2f54c9, 0x801e, 0x5a83, 0xbd62, 0x9cb6_d700_37af)),
        ("Favorites", uuid(0x663e8afc, 0x3c33, 0x5d02, 0x920a, 0xfb4e_755a_6efb)),
    ]

    private static let ids: Set<UUID> = Set(all.map(\.id))

    /// True when `id` is one of the default category ids.
    public static func isDefault(_ id: UUID) -> Bool { ids.contains(id) }

    /// Builds a UUID from its five hexadecimal groups (compile-time constants, no parsing).
    private static func uuid(_ a: UInt32, _ b: UInt16, _ c: UInt16, _ d: UInt16, _ e: UInt64) -> UUID {
        UUID(
            uuid: (
                UInt8(a >> 24), UInt8(a >> 16 & 0xFF), UInt8(a >> 8 & 0xFF), UInt8(a & 0xFF),
                UInt8(b >> 8), UInt8(b & 0xFF), UInt8(c >> 8), UInt8(c & 0xFF),
                UInt8(d >> 8), UInt8(d & 0xFF),
                UInt8(e >> 40 & 0xFF), UInt8(e >> 32 & 0xFF), UInt8(e >> 24 & 0xFF),
                UInt8(e >> 16 & 0xFF), UInt8(e >> 8 & 0xFF), UInt8(e & 0xFF)
            ))
    }
}
