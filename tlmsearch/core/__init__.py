"""The ground room: the frozen-config machinery (`base`), the value checks (`validate`) and the
architecture registry (`architectures`) that every package may use; it imports only `errors`."""
