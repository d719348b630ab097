"""What the tests share: servers, kernels, clients, fakes chosen through config."""
